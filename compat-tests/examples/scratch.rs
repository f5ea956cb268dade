use fabriq as zmq;
fn main() {
    let ctx = zmq::Context::new();
    let pull = ctx.socket(zmq::PULL).unwrap();
    pull.bind("inproc://x").unwrap();
    let push = ctx.socket(zmq::PUSH).unwrap();
    push.connect("inproc://x").unwrap();
    push.send("before", 0).unwrap();
    println!("{:?}", pull.recv_string(0));
    push.disconnect("inproc://x").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(100));
    println!("events {:?}", push.get_events());
    println!("send after disconnect: {:?}", push.send("after", zmq::DONTWAIT));
    pull.set_rcvtimeo(200).unwrap();
    println!("pull got: {:?}", pull.recv_string(0));
    for i in 0..3 { println!("send {i}: {:?}", push.send("more", zmq::DONTWAIT)); }
    // ipc rebind race
    let path = format!("/tmp/fq-scratch-{}.ipc", std::process::id());
    let ep = format!("ipc://{path}");
    let mut lost = 0;
    for _ in 0..20 {
        let a = ctx.socket(zmq::PULL).unwrap();
        a.bind(&ep).unwrap();
        drop(a);
        let b = ctx.socket(zmq::PULL).unwrap();
        b.bind(&ep).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        if !std::path::Path::new(&path).exists() { lost += 1; }
        drop(b);
    }
    println!("ipc file gone after rebind in {lost} of 20 tries");
}
